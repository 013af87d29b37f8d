package appstoreserver.internal;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Loads the two native libraries once per class loader: the self-contained libappstoreserver.so.0 (the Swift core,
 * its runtime and libcrypto inside) and libappstoreserver_jni.so (the JNI glue, linked against the first by SONAME).
 *
 * <p>By default both come from the jar, under {@code native/<platform>/} (e.g. {@code native/linux-x86_64/}): they
 * are copied into a new private temporary directory (owner-only permissions), loaded, and the copies deleted at once
 * (a loaded library stays mapped), so nothing is left behind, even after a crash. The system property
 * {@code appstoreserver.library.path} overrides: a directory holding libappstoreserver.so.0 (and optionally
 * libappstoreserver_jni.so, else the jar's glue is used), or the path of a libappstoreserver.so.0 itself.
 *
 * <p>The loaded library must have the major version this binding was generated for (before 1.0 also the minor
 * version): another one is refused with UnsatisfiedLinkError.
 */
public final class NativeLibrary {
    public static final String PROPERTY = "appstoreserver.library.path";
    public static final String CORE = "libappstoreserver.so.0";
    public static final String GLUE = "libappstoreserver_jni.so";

    private NativeLibrary() {
    }

    private static final class Holder {
        static final String LOADED_FROM = load();
    }

    /** Loads the libraries (once); returns where the core library came from. */
    public static String ensureLoaded() {
        return Holder.LOADED_FROM;
    }

    /** The platform's resource folder name, e.g. linux-x86_64; null when the jar carries nothing for it. */
    public static String platform() {
        String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
        String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
        if (os.startsWith("linux") && (arch.equals("amd64") || arch.equals("x86_64"))) {
            return "linux-x86_64";
        }
        return null;
    }

    private static String load() {
        String override = System.getProperty(PROPERTY);
        String from;
        try {
            if (override != null && !override.isEmpty()) {
                File given = new File(override);
                File core = given.isDirectory() ? new File(given, CORE) : given;
                if (!core.isFile()) {
                    throw new UnsatisfiedLinkError("appstoreserver: -D" + PROPERTY + "=" + override + ": no "
                            + (given.isDirectory() ? CORE + " in that directory" : "such file"));
                }
                System.load(core.getAbsolutePath());
                File glue = given.isDirectory() ? new File(given, GLUE) : null;
                if (glue != null && glue.isFile()) {
                    System.load(glue.getAbsolutePath());
                } else {
                    loadFromJar(false);
                }
                from = core.getAbsolutePath();
            } else {
                from = loadFromJar(true);
            }
        } catch (IOException e) {
            UnsatisfiedLinkError err = new UnsatisfiedLinkError("appstoreserver: cannot extract the native libraries: " + e);
            err.initCause(e);
            throw err;
        }
        checkVersion(from);
        return from;
    }

    private static String loadFromJar(boolean withCore) throws IOException {
        String platform = platform();
        if (platform == null) {
            throw new UnsatisfiedLinkError("appstoreserver: no native library for " + System.getProperty("os.name") + " "
                    + System.getProperty("os.arch") + " in this jar (it carries linux-x86_64); build the library for this "
                    + "platform and pass -D" + PROPERTY + "=<its directory>");
        }
        String base = "/native/" + platform + "/";
        Path dir = Files.createTempDirectory("appstoreserver-");
        List<Path> extracted = new ArrayList<>();
        try {
            if (withCore) {
                Path core = extract(base + CORE, dir.resolve(CORE));
                extracted.add(core);
                System.load(core.toString());
            }
            Path glue = extract(base + GLUE, dir.resolve(GLUE));
            extracted.add(glue);
            System.load(glue.toString());
        } finally {
            for (Path p : extracted) {
                Files.deleteIfExists(p);
            }
            Files.deleteIfExists(dir);
        }
        return "jar:" + base + CORE;
    }

    private static Path extract(String resource, Path target) throws IOException {
        try (InputStream in = NativeLibrary.class.getResourceAsStream(resource)) {
            if (in == null) {
                throw new UnsatisfiedLinkError("appstoreserver: the jar has no " + resource
                        + " (built without it? run bindings/java/build)");
            }
            Files.copy(in, target, StandardCopyOption.REPLACE_EXISTING);
        }
        return target;
    }

    private static void checkVersion(String from) {
        String loaded = new String(Abi.version(), StandardCharsets.UTF_8);
        String[] have = loaded.split("\\.");
        int major = AbiConstants.VERSION_MAJOR;
        int minor = AbiConstants.VERSION_MINOR;
        boolean ok;
        try {
            ok = have.length >= 2 && Integer.parseInt(have[0]) == major && (major != 0 || Integer.parseInt(have[1]) == minor);
        } catch (NumberFormatException e) {
            ok = false;
        }
        if (!ok) {
            throw new UnsatisfiedLinkError("appstoreserver: " + from + " is version " + loaded + ", this binding needs "
                    + major + "." + minor + ".x");
        }
    }
}
