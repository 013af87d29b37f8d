package appstoreserver.tests;

import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.jar.JarFile;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The jar embeds the native library, so it carries the licence and the notices of what that embeds, byte for byte. */
class JarNoticesTest {
    @Test
    void theJarCarriesTheLicenceAndTheNotices() throws Exception {
        String version = Files.readString(Support.REPO.resolve("VERSION")).trim();
        Path jar = Support.REPO.resolve("bindings/java/build/appstoreserver-" + version + ".jar");
        assertTrue(Files.isRegularFile(jar), "no " + jar);
        try (JarFile f = new JarFile(jar.toFile())) {
            for (String name : new String[] {"LICENSE", "THIRD_PARTY_NOTICES"}) {
                var entry = f.getEntry("META-INF/" + name);
                assertNotNull(entry, "META-INF/" + name + " in the jar");
                assertArrayEquals(Files.readAllBytes(Support.REPO.resolve(name)), f.getInputStream(entry).readAllBytes(), name);
            }
        }
    }
}
