/**
 * Service-provider interfaces: transports ({@link io.viper.spi.TransportProvider}), the PFS repository
 * ({@link io.viper.spi.RepositoryProvider}) and notifiers ({@link io.viper.spi.NotifierProvider}), and GPU memory
 * ({@link io.viper.spi.GpuProvider}, {@link io.viper.spi.DeviceBuffer}) so that core can stage and receive models on a
 * GPU without a CUDA library of its own. Implementations live in the viper-transfer-* and viper-notify-* modules, are
 * declared in {@code module-info.java} and {@code META-INF/services}, and are chosen by URI scheme.
 * {@link io.viper.spi.AnnouncementFeed} is the subscriber half of every notifier, written once.
 */
package io.viper.spi;
