module appstoreserver.dev/appstoreserver

go 1.19
