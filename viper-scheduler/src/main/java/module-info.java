/** Cumulative-inference-loss simulation and checkpoint planning (fixed, adaptive, optimal, epoch, none). */
module io.viper.scheduler {
    requires io.viper.core;
    requires io.viper.predictor;

    exports io.viper.scheduler;
}
