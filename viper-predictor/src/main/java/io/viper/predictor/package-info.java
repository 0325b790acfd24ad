/**
 * Training-loss curve fitting (Exp2, Exp3, Lin2, Expd3, Pow3 by Levenberg-Marquardt) and transfer cost models.
 */
package io.viper.predictor;
