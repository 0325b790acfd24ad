/**
 * Not API: the demo's process protocol ({@link io.viper.demo.internal.DemoEvents}, both sides), the processes' options
 * ({@link io.viper.demo.internal.ProcessOptions}), the driver's handle on a process
 * ({@link io.viper.demo.internal.ChildProcess}) and the process's own side ({@link io.viper.demo.internal.ChildIo}).
 */
package io.viper.demo.internal;
