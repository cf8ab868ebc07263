package model

import "context"

// Model is what the engine asks of a model: one exchange. Providers are
// built on langchaingo; the engine sees only this interface and the types
// below (see Registry.New for the adapter).
type Model interface {
	// Generate sends a conversation and returns the model's next turn.
	Generate(ctx context.Context, req *Request) (*Response, error)
}

// Role is who speaks a message.
type Role string

// Message roles.
const (
	System    Role = "system"
	User      Role = "user"
	Assistant Role = "assistant"
	ToolRole  Role = "tool" // a tool call's result
)

// Message is one message of a conversation.
type Message struct {
	Role Role
	// Text is what system, user and assistant say, or a tool message's
	// result.
	Text string
	// ToolCalls, in an assistant message, are the calls it made.
	ToolCalls []ToolCall
	// CallID and Tool, in a tool message, name the call it answers.
	CallID string
	Tool   string
}

// ToolCall is one tool call a model made.
type ToolCall struct {
	ID   string
	Name string
	Args string // JSON, as the model sent it: untrusted
}

// ToolDef offers a tool to a model.
type ToolDef struct {
	Name        string
	Description string
	Parameters  map[string]any // JSON Schema of its arguments
}

// Request is one exchange with a model.
type Request struct {
	Messages []Message
	Tools    []ToolDef
	// Force, when set, names the tool the model must call.
	Force string
	// Temperature and MaxTokens, when set, bound the answer.
	Temperature *float64
	MaxTokens   int
	// OnText, when set, receives the answer's text as it arrives
	// (streaming).
	OnText func(chunk string)
}

// Response is a model's turn.
type Response struct {
	Text      string
	ToolCalls []ToolCall
	Usage     Usage
}

// Usage is the tokens one exchange took, as the provider reports them.
type Usage struct {
	InputTokens  int
	OutputTokens int
}
