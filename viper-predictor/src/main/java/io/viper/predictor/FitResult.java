package io.viper.predictor;

import java.util.List;

/**
 * The outcome of {@link CurveFitter#fit(double[], double[])}.
 *
 * @param curve the chosen curve, refitted on all points
 * @param rmse root-mean-square error of {@code curve} over all points
 * @param holdoutError root-mean-square error, on the held-back points, of the chosen family fitted without them (the
 *     selection criterion)
 * @param candidates every family tried, best first; failed ones last
 */
public record FitResult(LossCurve curve, double rmse, double holdoutError, List<Candidate> candidates) {

    /** Copies the candidate list. */
    public FitResult {
        candidates = List.copyOf(candidates);
    }

    /**
     * One family's fit on the training part of the points.
     *
     * @param family the family
     * @param curve the curve fitted without the held-back points, or {@code null} if the fit failed
     * @param trainRmse RMSE on the points it was fitted to ({@code NaN} if failed)
     * @param holdoutError RMSE on the held-back points ({@code NaN} if failed)
     * @param failure why the fit failed, or {@code null}
     */
    public record Candidate(
            CurveFamily family, LossCurve curve, double trainRmse, double holdoutError, String failure) {
        /** Whether this family produced a usable curve. */
        public boolean ok() {
            return curve != null;
        }
    }
}
