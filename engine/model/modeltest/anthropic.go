package modeltest

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
)

func anthropicReply(w http.ResponseWriter, body []byte, _ string, o Options) error {
	type block struct {
		Type    string `json:"type"`
		Text    string `json:"text"`
		Content any    `json:"content"`
	}
	var req struct {
		Stream   bool `json:"stream"`
		Messages []struct {
			Role    string  `json:"role"`
			Content []block `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &req); err != nil || len(req.Messages) == 0 {
		return errors.New("want a messages request with messages, each with content blocks")
	}
	last := req.Messages[len(req.Messages)-1]
	var results []string
	user := ""
	for _, b := range last.Content {
		switch b.Type {
		case "tool_result":
			results = append(results, fmt.Sprint(b.Content))
		case "text":
			user += b.Text
		}
	}
	tool := ""
	if len(req.Tools) > 0 {
		tool = req.Tools[0].Name
	}
	text, calls := decide(tool, results, user, o, [2]string{"toolu_01", "toolu_02"})
	stop := "end_turn"
	if len(calls) > 0 {
		stop = "tool_use"
	}
	if !req.Stream {
		var content []any
		if text != "" {
			content = append(content, map[string]any{"type": "text", "text": text})
		}
		for _, c := range calls {
			content = append(content, map[string]any{"type": "tool_use", "id": c.id, "name": c.name, "input": json.RawMessage(c.args)})
		}
		w.Header().Set("Content-Type", "application/json")
		return json.NewEncoder(w).Encode(map[string]any{"id": "msg_1", "type": "message", "role": "assistant", "model": "fake",
			"content": content, "stop_reason": stop, "usage": map[string]any{"input_tokens": 13, "output_tokens": 5}})
	}
	w.Header().Set("Content-Type", "text/event-stream")
	sse(w, "message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": "msg_1", "type": "message",
		"role": "assistant", "model": "fake", "content": []any{}, "usage": map[string]any{"input_tokens": 13, "output_tokens": 1}}})
	i := 0
	if text != "" {
		sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "text", "text": ""}})
		for _, t := range chunks(text, o) {
			sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "text_delta", "text": t}})
		}
		sse(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
		i++
	}
	for _, c := range calls {
		sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": i,
			"content_block": map[string]any{"type": "tool_use", "id": c.id, "name": c.name, "input": map[string]any{}}})
		for _, a := range halves(c.args) {
			sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": a}})
		}
		sse(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
		i++
	}
	sse(w, "message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop}, "usage": map[string]any{"output_tokens": 5}})
	sse(w, "message_stop", map[string]any{"type": "message_stop"})
	return nil
}
