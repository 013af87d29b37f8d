// consumer_cxx: a C++17 program built against an INSTALLED libappstoreserver through find_package(appstoreserver).
//
//   consumer_cxx ROOT_DER JWS_FILE BUNDLE_ID ENVIRONMENT EXPECTED_NOTIFICATION_TYPE
//
// The C consumer's checks (../consumer.c) with C++ ownership: the library's handles and strings are held by
// std::unique_ptr with the library's free functions, so every exit path releases them.
#include <appstoreserver.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace {

template <typename T, void (*Free)(T *)>
struct Deleter {
    void operator()(T *p) const { Free(p); }
};
using Options = std::unique_ptr<appstore_verifier_options, Deleter<appstore_verifier_options, appstore_verifier_options_free>>;
using Verifier = std::unique_ptr<appstore_verifier, Deleter<appstore_verifier, appstore_verifier_free>>;
using Error = std::unique_ptr<appstore_error, Deleter<appstore_error, appstore_error_free>>;
using String = std::unique_ptr<char, Deleter<char, appstore_string_free>>;

// The same start-up check as the C consumer and the README: same major (before 1.0 also the same minor), and a
// library at least as new as the header.
bool library_is_compatible() {
    int major = 0, minor = 0, patch = 0;
    if (std::sscanf(appstore_version(), "%d.%d.%d", &major, &minor, &patch) != 3) return false;
    if (major != APPSTORE_VERSION_MAJOR) return false;
    if (major == 0 && minor != APPSTORE_VERSION_MINOR) return false;
    if (minor != APPSTORE_VERSION_MINOR) return minor > APPSTORE_VERSION_MINOR;
    return patch >= APPSTORE_VERSION_PATCH;
}

// `text`: trailing newlines and spaces dropped (a JWS file). Never for a DER root: its last byte is a signature's,
// and may be 0x0A, 0x0D or 0x20 (about 3 freshly generated roots in 256 were cut short).
std::optional<std::string> read_file(const char *path, bool text) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return std::nullopt;
    std::string s{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    while (text && !s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
    return s;
}

std::string string_field(std::string_view json, std::string_view key) {
    const std::string quoted = "\"" + std::string(key) + "\"";
    auto at = json.find(quoted);
    if (at == std::string_view::npos) return {};
    at = json.find('"', json.find(':', at + quoted.size()));
    const auto end = json.find('"', at + 1);
    return at == std::string_view::npos || end == std::string_view::npos ? std::string{}
                                                                         : std::string(json.substr(at + 1, end - at - 1));
}

// The verified JSON, or nothing (the rejection printed).
std::optional<std::string> verify(const Verifier &v, const std::string &jws) {
    char *json = nullptr;
    appstore_error *raw = nullptr;
    const appstore_status st = appstore_verifier_verify_notification_deep(v.get(), jws.data(), jws.size(), &json, &raw);
    const Error err(raw);
    const String owned(json);
    if (st != APPSTORE_OK) {
        std::printf("  rejected: %s (%s): %s\n", appstore_status_name(st),
                    appstore_reason_name(appstore_error_reason(err.get())), appstore_error_message(err.get()));
        return std::nullopt;
    }
    return std::string(owned.get());
}

}  // namespace

int main(int argc, char **argv) {
    if (argc != 6) {
        std::fprintf(stderr, "usage: %s ROOT_DER JWS_FILE BUNDLE_ID Sandbox|Production EXPECTED_TYPE\n", argv[0]);
        return 2;
    }
    std::printf("libappstoreserver %s loaded, header %s (C++%ld)\n", appstore_version(), APPSTORE_VERSION_STRING,
                static_cast<long>(__cplusplus));
    if (!library_is_compatible()) {
        std::fprintf(stderr, "consumer_cxx: libappstoreserver %s is not compatible with the header %s\n",
                     appstore_version(), APPSTORE_VERSION_STRING);
        return 3;
    }
    const auto root = read_file(argv[1], false);
    auto jws = read_file(argv[2], true);
    if (!root || !jws) {
        std::fprintf(stderr, "consumer_cxx: cannot read %s or %s\n", argv[1], argv[2]);
        return 2;
    }
    const std::string_view env = argv[4];

    appstore_verifier_options *raw_opts = nullptr;
    appstore_verifier *raw_verifier = nullptr;
    appstore_error *raw_err = nullptr;
    if (appstore_verifier_options_new(&raw_opts, &raw_err) != APPSTORE_OK) {
        std::fprintf(stderr, "consumer_cxx: %s\n", appstore_error_message(Error(raw_err).get()));
        return 1;
    }
    const Options opts(raw_opts);
    if (appstore_verifier_options_add_root(opts.get(), reinterpret_cast<const uint8_t *>(root->data()), root->size(),
                                           &raw_err) != APPSTORE_OK ||
        appstore_verifier_options_set_bundle_id(opts.get(), argv[3], &raw_err) != APPSTORE_OK ||
        appstore_verifier_options_set_environment(opts.get(), env == "Production" ? APPSTORE_ENVIRONMENT_PRODUCTION
                                                                                  : APPSTORE_ENVIRONMENT_SANDBOX,
                                                  &raw_err) != APPSTORE_OK ||
        appstore_verifier_new(opts.get(), &raw_verifier, &raw_err) != APPSTORE_OK) {
        std::fprintf(stderr, "consumer_cxx: configuration failed: %s\n", appstore_error_message(Error(raw_err).get()));
        return 1;
    }
    const Verifier verifier(raw_verifier);

    const auto json = verify(verifier, *jws);
    if (!json) return 1;
    const std::string type = string_field(*json, "notificationType");
    std::printf("  verified: notificationType %s\n", type.c_str());
    if (type != argv[5]) {
        std::fprintf(stderr, "consumer_cxx: expected notificationType %s, got %s\n", argv[5], type.c_str());
        return 1;
    }
    // One character of the signature changed: must be rejected.
    const auto sig = jws->rfind('.');
    if (sig == std::string::npos || sig + 2 >= jws->size()) return 1;
    char &c = (*jws)[sig + 2];
    c = c == 'A' ? 'B' : 'A';
    if (verify(verifier, *jws)) {
        std::fprintf(stderr, "consumer_cxx: a notification with a changed signature was accepted\n");
        return 1;
    }
    std::printf("consumer_cxx OK\n");
    return 0;
}
