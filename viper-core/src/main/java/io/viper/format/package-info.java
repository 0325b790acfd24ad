/**
 * The safetensors file format: a memory-mapping reader that validates like the reference implementation, and a
 * streaming writer.
 */
package io.viper.format;
