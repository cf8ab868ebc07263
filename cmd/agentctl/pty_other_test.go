//go:build !linux

package main

import "github.com/rogpeppe/go-internal/testscript"

// addPTY adds nothing off Linux: the scenarios that need a terminal
// skip there ([!linux]).
func addPTY(map[string]func(ts *testscript.TestScript, neg bool, args []string)) {}
