package io.viper.cli;

import io.viper.errors.IoProblems;
import io.viper.errors.ViperConfigException;
import java.io.IOException;
import java.io.StringReader;
import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CoderResult;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Properties;

/**
 * Reads a {@code --config} file: UTF-8 text in Java properties form, one {@code key=value} (or {@code key: value}) per
 * line, {@code #} and {@code !} comments, blank lines. Anything else is refused with one line naming the file (and the
 * line): a file that is not regular (a device such as {@code /dev/zero}, a FIFO; refused before any read), one over
 * {@value #MAX_BYTES} bytes, bytes that are not UTF-8, control characters, a line that is not {@code key=value}.
 * Stateless.
 */
final class ConfigFile {
    /** Largest config file read; a real one is a few hundred bytes. */
    static final int MAX_BYTES = 1 << 20;

    private ConfigFile() {}

    /** The settings of {@code file}, in file order; the keys themselves are checked by {@link io.viper.ViperConfig}. */
    static Map<String, String> read(Path file) {
        String what = "config file " + file;
        byte[] bytes;
        try {
            if (!Files.isRegularFile(file)) {
                throw new ViperConfigException(
                        what + (Files.exists(file) ? " is not a regular file" : " does not exist"));
            }
            if (Files.size(file) > MAX_BYTES) {
                throw new ViperConfigException(what + " is larger than " + MAX_BYTES + " bytes; is it the right file?");
            }
            bytes = Files.readAllBytes(file);
        } catch (NoSuchFileException e) {
            throw new ViperConfigException(what + " does not exist");
        } catch (IOException e) {
            throw new ViperConfigException("cannot read " + what + ": " + IoProblems.reason(e));
        }
        if (bytes.length > MAX_BYTES) {
            throw new ViperConfigException(what + " is larger than " + MAX_BYTES + " bytes; is it the right file?");
        }
        String text = decode(bytes, what);
        checkLines(text, what);
        Properties p = new Properties();
        try {
            p.load(new StringReader(text));
        } catch (IOException | IllegalArgumentException e) {
            throw new ViperConfigException(what + ": " + e.getMessage());
        }
        Map<String, String> out = new LinkedHashMap<>();
        p.stringPropertyNames().stream().sorted().forEach(k -> out.put(k, p.getProperty(k)));
        return out;
    }

    private static String decode(byte[] bytes, String what) {
        CharsetDecoder decoder = StandardCharsets.UTF_8
                .newDecoder()
                .onMalformedInput(CodingErrorAction.REPORT)
                .onUnmappableCharacter(CodingErrorAction.REPORT);
        ByteBuffer in = ByteBuffer.wrap(bytes);
        CharBuffer out = CharBuffer.allocate(bytes.length);
        CoderResult r = decoder.decode(in, out, true);
        if (r.isError()) {
            throw new ViperConfigException(what + ", line " + lineAt(bytes, in.position()) + ": not UTF-8 text");
        }
        decoder.flush(out);
        return out.flip().toString();
    }

    private static int lineAt(byte[] bytes, int position) {
        int line = 1;
        for (int i = 0; i < position; i++) {
            if (bytes[i] == '\n') {
                line++;
            }
        }
        return line;
    }

    /** Every logical line is blank, a comment, or {@code key=value} / {@code key: value} with a key of no spaces. */
    private static void checkLines(String text, String what) {
        String[] lines = text.split("\r\n|\r|\n", -1);
        boolean continued = false;
        for (int i = 0; i < lines.length; i++) {
            String line = lines[i];
            String where = what + ", line " + (i + 1);
            for (int c = 0; c < line.length(); c++) {
                char ch = line.charAt(c);
                if (Character.isISOControl(ch) && ch != '\t' && ch != '\f') {
                    throw new ViperConfigException(where + ": control character U+" + String.format("%04X", (int) ch)
                            + " (is it a text file?)");
                }
            }
            String s = line.stripLeading();
            boolean continuation = continued;
            continued = endsWithOddBackslashes(line);
            if (continuation || s.isEmpty() || s.startsWith("#") || s.startsWith("!")) {
                continue;
            }
            int eq = separator(s);
            String key = eq < 0 ? "" : s.substring(0, eq).strip();
            if (key.isEmpty() || key.chars().anyMatch(Character::isWhitespace)) {
                throw new ViperConfigException(where + ": expected key=value, got '" + abbreviate(s) + "'");
            }
        }
    }

    /** Index of the first {@code =} or {@code :} not escaped by a backslash, or -1. */
    private static int separator(String s) {
        for (int i = 0; i < s.length(); i++) {
            char ch = s.charAt(i);
            if (ch == '\\') {
                i++;
            } else if (ch == '=' || ch == ':') {
                return i;
            }
        }
        return -1;
    }

    private static boolean endsWithOddBackslashes(String line) {
        int n = 0;
        for (int i = line.length() - 1; i >= 0 && line.charAt(i) == '\\'; i--) {
            n++;
        }
        return n % 2 == 1;
    }

    private static String abbreviate(String s) {
        return s.length() <= 60 ? s : s.substring(0, 57) + "...";
    }
}
