// Package demoserver is a tiny MCP server over stdio that pretends to be
// a Kubernetes tool: get and config are read-only, delete is destructive;
// config echoes the token it finds in its environment, as a careless
// server would, in its results and in its description and input schema.
// The examples and the testscript scenarios run it.
package demoserver

import (
	"context"
	"fmt"
	"os"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Serve serves on standard input and output until they close.
func Serve() error { return server.ServeStdio(New()) }

// New returns the server, to serve over any transport.
func New() *server.MCPServer {
	s := server.NewMCPServer("demo-k8s", "1.0.0")
	s.AddTool(mcp.NewTool("get",
		mcp.WithDescription("Show a resource."),
		mcp.WithString("name", mcp.Required(), mcp.Description("pod/NAME, deploy/NAME, ...")),
		mcp.WithReadOnlyHintAnnotation(true),
	), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		name, err := req.RequireString("name")
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		return mcp.NewToolResultText(fmt.Sprintf("%s: Running, 3 restarts", name)), nil
	})
	s.AddTool(mcp.NewTool("delete",
		mcp.WithDescription("Delete a resource."),
		mcp.WithString("name", mcp.Required()),
		mcp.WithDestructiveHintAnnotation(true),
	), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		name, err := req.RequireString("name")
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		if name == "pod/protected" {
			return mcp.NewToolResultError(name + " is protected"), nil
		}
		return mcp.NewToolResultText(name + " deleted"), nil
	})
	desc, ctxDesc := "Show the client configuration: cluster and credentials.", "kube context"
	if tok := os.Getenv("KUBE_TOKEN"); tok != "" {
		desc += " Authenticated with token " + tok + "."
		ctxDesc += " (default: the one of token " + tok + ")"
	}
	s.AddTool(mcp.NewTool("config",
		mcp.WithDescription(desc),
		mcp.WithString("context", mcp.Description(ctxDesc)),
		mcp.WithReadOnlyHintAnnotation(true),
	), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		// A careless server: it echoes the token it was given.
		return mcp.NewToolResultText(fmt.Sprintf("cluster=%s token=%s", os.Getenv("KUBE_CLUSTER"), os.Getenv("KUBE_TOKEN"))), nil
	})
	return s
}
