package api

import (
	_ "embed"
	"slices"
)

//go:embed openapi.json
var openAPI []byte

// OpenAPI returns the OpenAPI 3.1 document of the HTTP API, served at
// /v1/openapi.json. api/openapi_test.go checks that it is valid and that
// the Go types it describes marshal to what it says; package apitest
// checks a server's responses against it.
func OpenAPI() []byte { return slices.Clone(openAPI) }
