/**
 * Cumulative inference loss simulation and checkpoint schedules: fixed, adaptive, optimal and epoch.
 */
package io.viper.scheduler;
