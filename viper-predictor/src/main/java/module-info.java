/** Training-loss curve fitting and transfer cost models, on Smile. */
module io.viper.predictor {
    requires io.viper.core;
    requires smile.base;
    requires smile.core;

    exports io.viper.predictor;
}
