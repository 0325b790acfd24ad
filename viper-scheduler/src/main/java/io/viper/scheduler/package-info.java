/**
 * Cumulative inference loss simulation ({@link io.viper.scheduler.CilSimulator}) and checkpoint
 * schedules ({@link io.viper.scheduler.Scheduler}: fixed, adaptive, optimal and epoch), and the
 * producer policy that follows and revises them ({@link io.viper.scheduler.PredictedCheckpointPolicy}).
 */
package io.viper.scheduler;
