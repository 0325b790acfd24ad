/** Cumulative-inference-loss simulation and checkpoint schedules (fixed, adaptive, optimal, epoch). */
module io.viper.scheduler {
    requires io.viper.core;
    requires io.viper.predictor;

    exports io.viper.scheduler;
}
