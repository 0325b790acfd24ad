package io.viper.demo.digits;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.errors.ViperFormatException;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.zip.GZIPOutputStream;
import org.junit.jupiter.api.Test;

class DigitsDatasetTest {

    private static String row(int label, int fill) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < 64; i++) {
            sb.append(i == 0 ? "" : ",").append(fill);
        }
        return sb.append(',').append(label).toString();
    }

    private static DigitsDataset csv(String text) {
        return DigitsDataset.readCsv(new ByteArrayInputStream(text.getBytes(StandardCharsets.UTF_8)), "test.csv");
    }

    @Test
    void bundledDataHas1797RowsWithAllTenLabels() {
        DigitsDataset d = DigitsDataset.load();
        assertEquals(1797, d.size());
        int[] counts = d.labelCounts();
        assertEquals(10, counts.length);
        assertEquals(1797, Arrays.stream(counts).sum());
        for (int c = 0; c < 10; c++) {
            assertTrue(counts[c] >= 170 && counts[c] <= 190, "label " + c + " has " + counts[c] + " rows");
        }
        assertSame(d, DigitsDataset.load(), "load() parses once and shares the instance");
    }

    @Test
    void firstRowMatchesTheFileAndIsScaledToUnitRange() {
        DigitsDataset d = DigitsDataset.load();
        // first line of digits.csv.gz: 0,0,5,13,9,1,0,0,... label 0
        assertEquals(0, d.label(0));
        assertEquals(5, d.pixel(0, 2));
        assertEquals(13, d.pixel(0, 3));
        float[] img = d.image(0);
        assertEquals(64, img.length);
        assertEquals(13f / 16f, img[3]);
        for (int i = 0; i < d.size(); i++) {
            for (float v : d.image(i)) {
                assertTrue(v >= 0f && v <= 1f);
            }
        }
    }

    @Test
    void readsPlainCsvWithCrLfLineEnds() {
        DigitsDataset d = csv(row(3, 16) + "\r\n" + row(9, 0) + "\r\n");
        assertEquals(2, d.size());
        assertEquals(3, d.label(0));
        assertEquals(9, d.label(1));
        assertEquals(16, d.pixel(0, 63));
    }

    @Test
    void rejectsAWrongFieldCountNamingTheLine() {
        String bad = row(1, 2).substring(2); // drops the first field: 64 fields
        ViperFormatException e =
                assertThrows(ViperFormatException.class, () -> csv(row(1, 2) + "\n" + row(2, 3) + "\n" + bad + "\n"));
        assertEquals("test.csv", e.source());
        assertTrue(e.getMessage().contains("line 3"), e.getMessage());
        assertTrue(e.getMessage().contains("64 fields, expected 65"), e.getMessage());

        ViperFormatException tooMany = assertThrows(ViperFormatException.class, () -> csv(row(1, 2) + ",7\n"));
        assertTrue(
                tooMany.getMessage().contains("line 1") && tooMany.getMessage().contains("more than 65"),
                tooMany.getMessage());
    }

    @Test
    void rejectsOutOfRangeAndNonIntegerValues() {
        ViperFormatException pixel =
                assertThrows(ViperFormatException.class, () -> csv(row(0, 1) + "\n" + row(0, 17) + "\n"));
        assertTrue(pixel.getMessage().contains("line 2: pixel 0 is '17'"), pixel.getMessage());

        ViperFormatException label = assertThrows(ViperFormatException.class, () -> csv(row(10, 1) + "\n"));
        assertTrue(label.getMessage().contains("line 1: label is '10'"), label.getMessage());

        ViperFormatException negative = assertThrows(ViperFormatException.class, () -> csv(row(-1, 1)));
        assertTrue(negative.getMessage().contains("label is '-1'"), negative.getMessage());

        ViperFormatException text =
                assertThrows(ViperFormatException.class, () -> csv(row(1, 1).replaceFirst("^1,", "x,")));
        assertTrue(text.getMessage().contains("pixel 0 is 'x'"), text.getMessage());

        ViperFormatException fraction =
                assertThrows(ViperFormatException.class, () -> csv(row(1, 1).replaceFirst("^1,", "1.5,")));
        assertTrue(fraction.getMessage().contains("pixel 0 is '1.5'"), fraction.getMessage());

        ViperFormatException emptyField =
                assertThrows(ViperFormatException.class, () -> csv(row(1, 1).replaceFirst("^1,", ",")));
        assertTrue(emptyField.getMessage().contains("pixel 0 is ''"), emptyField.getMessage());
    }

    @Test
    void rejectsBlankLinesAndEmptyInput() {
        ViperFormatException blank =
                assertThrows(ViperFormatException.class, () -> csv(row(1, 1) + "\n\n" + row(2, 2) + "\n"));
        assertTrue(blank.getMessage().contains("line 2: empty row"), blank.getMessage());
        ViperFormatException none = assertThrows(ViperFormatException.class, () -> csv(""));
        assertTrue(none.getMessage().contains("no rows"), none.getMessage());
    }

    @Test
    void readsGzipAndRejectsBytesThatAreNotGzip() throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (GZIPOutputStream gz = new GZIPOutputStream(bytes)) {
            gz.write((row(7, 4) + "\n").getBytes(StandardCharsets.UTF_8));
        }
        DigitsDataset d = DigitsDataset.readGzip(new ByteArrayInputStream(bytes.toByteArray()), "x.csv.gz");
        assertEquals(1, d.size());
        assertEquals(7, d.label(0));

        ViperFormatException e = assertThrows(
                ViperFormatException.class,
                () -> DigitsDataset.readGzip(
                        new ByteArrayInputStream(row(7, 4).getBytes(StandardCharsets.UTF_8)), "plain.csv"));
        assertEquals("plain.csv", e.source());
        assertTrue(e.getMessage().contains("gzip"), e.getMessage());

        byte[] truncated = Arrays.copyOf(bytes.toByteArray(), bytes.size() - 12);
        assertThrows(
                ViperFormatException.class,
                () -> DigitsDataset.readGzip(new ByteArrayInputStream(truncated), "cut.csv.gz"));
    }
}
