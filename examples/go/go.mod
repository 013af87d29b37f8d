module appstoreserver.dev/examples

go 1.19

require appstoreserver.dev/appstoreserver v0.0.0

// The binding from this repository (or from the release's source tarball: bindings/go). Nothing is downloaded.
replace appstoreserver.dev/appstoreserver => ../../bindings/go
