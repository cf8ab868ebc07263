package modeltest

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

func openAIReply(w http.ResponseWriter, body []byte, key string, o Options) error {
	var req struct {
		Stream   bool `json:"stream"`
		Messages []struct {
			Role    string `json:"role"`
			Content any    `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &req); err != nil || len(req.Messages) == 0 {
		return errors.New("want a chat completions request with messages")
	}
	// The results of the last assistant turn: the tool messages after it.
	var results []string
	for i := len(req.Messages) - 1; i >= 0 && req.Messages[i].Role == "tool"; i-- {
		results = append([]string{fmt.Sprint(req.Messages[i].Content)}, results...)
	}
	tool := ""
	if len(req.Tools) > 0 {
		tool = req.Tools[0].Function.Name
	}
	text, calls := decide(tool, results, fmt.Sprint(req.Messages[len(req.Messages)-1].Content), o, [2]string{"call_abc", "call_def"})
	reasoning := ""
	if o.Echo {
		text, reasoning = strings.TrimSpace(text+" "+echo(key)), key
		for i := range calls {
			calls[i].id += "_" + key
			calls[i].args = strings.Replace(calls[i].args, `"}`, " "+strings.Trim(mustJSON(key), `"`)+`"}`, 1)
		}
	}
	finish := "stop"
	if len(calls) > 0 {
		finish = "tool_calls"
	}
	usage := map[string]any{"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}
	if !req.Stream {
		msg := map[string]any{"role": "assistant", "content": nil}
		if reasoning != "" {
			msg["reasoning_content"] = reasoning
		}
		if text != "" {
			msg["content"] = text
		}
		if len(calls) > 0 {
			var tcs []any
			for _, c := range calls {
				tcs = append(tcs, map[string]any{"id": c.id, "type": "function",
					"function": map[string]any{"name": c.name, "arguments": c.args}})
			}
			msg["tool_calls"] = tcs
		}
		w.Header().Set("Content-Type", "application/json")
		return json.NewEncoder(w).Encode(map[string]any{"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "fake",
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
			"usage":   usage})
	}
	w.Header().Set("Content-Type", "text/event-stream")
	chunk := func(delta map[string]any, finish any) {
		sse(w, "", map[string]any{"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "fake",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
	}
	chunk(map[string]any{"role": "assistant", "content": ""}, nil)
	if reasoning != "" {
		chunk(map[string]any{"reasoning_content": reasoning}, nil)
	}
	for _, t := range chunks(text, o) {
		chunk(map[string]any{"content": t}, nil)
	}
	for i, c := range calls {
		h := halves(c.args)
		chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": c.id, "type": "function",
			"function": map[string]any{"name": c.name, "arguments": ""}}}}, nil)
		for _, a := range h {
			chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": a}}}}, nil)
		}
	}
	chunk(map[string]any{}, finish)
	sse(w, "", map[string]any{"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "fake",
		"choices": []any{}, "usage": usage})
	fmt.Fprint(w, "data: [DONE]\n\n")
	return nil
}

// mustJSON is v as JSON.
func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
