/**
 * Training-loss curve fitting ({@link io.viper.predictor.CurveFitter}: Exp2, Exp3, Lin2, Expd3 and Pow3 by Smile's
 * Levenberg-Marquardt, chosen on held-back points) and the transfer cost model ({@link io.viper.predictor.CostModel}).
 */
package io.viper.predictor;
