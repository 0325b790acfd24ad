/** Network addresses shared by the socket-based transports and notifiers (plain JDK, no Netty). */
package io.viper.net;
