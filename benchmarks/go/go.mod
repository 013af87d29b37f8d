module appstoreserver.dev/bench

go 1.19

require appstoreserver.dev/appstoreserver v0.0.0

replace appstoreserver.dev/appstoreserver => ../../bindings/go
