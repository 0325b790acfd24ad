/**
 * Cumulative inference loss simulation ({@link io.viper.scheduler.CilSimulator}), checkpoint planning through one entry
 * point ({@link io.viper.scheduler.CheckpointPlanner}, with one {@link io.viper.scheduler.ScheduleAlgorithm} per
 * algorithm: fixed, adaptive, optimal, epoch and none), and the producer policy that follows and revises a plan
 * ({@link io.viper.scheduler.PredictedCheckpointPolicy}).
 */
package io.viper.scheduler;
