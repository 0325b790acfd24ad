/**
 * Viper for DJL: {@link io.viper.djl.ViperTrainingListener} publishes a block's parameters from a DJL training loop,
 * {@link io.viper.djl.BlockParameters} loads a leased version into a block. Core stays free of DJL: only this module
 * uses it.
 */
@SuppressWarnings("requires-transitive-automatic") // DJL's api jar names its module only in its manifest
module io.viper.djl {
    requires transitive io.viper.core;
    requires transitive ai.djl.api;

    exports io.viper.djl;
}
