//go:build jsonschema

package main

// Built with -tags jsonschema, the floor also pays the package init of the
// JSON Schema library agentctl links: the benchmarks use it to show how
// much of a cold command's start is that init.
import _ "github.com/santhosh-tekuri/jsonschema/v6"
