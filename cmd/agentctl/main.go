// Command agentctl declares LLM agents in YAML, runs them, and lets humans
// approve or decline their tool calls from any process, later.
package main

import "os"

func main() { os.Exit(Main()) }
