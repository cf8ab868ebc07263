package http

import (
	"context"
	"encoding/json"
	"fmt"
	nethttp "net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/spec"
	"github.com/agentctl/agentctl/spec/tmpl"
	"github.com/agentctl/agentctl/toolkits"
)

// A secret straddling the maxResponse cut is cut whole before the body is
// truncated: no prefix of it is kept. A secret in a shown header is cut
// too.
func TestResponseCapRedactsFirst(t *testing.T) {
	const secret = "SECRETVALUEABCDEFGHIJ"
	srv := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		w.Header().Set("Location", "/next?token="+secret)
		fmt.Fprintf(w, "%s%s and more", strings.Repeat("0", 985), secret)
	}))
	defer srv.Close()
	u, err := tmpl.Parse(srv.URL+"/x", tmpl.Vars{})
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(&spec.HTTP{Method: "GET", URL: u, Origin: srv.URL, MaxResponse: 1000})
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Do(context.Background(), toolkits.Call{Env: map[string]string{"E": secret}})
	if err != nil {
		t.Fatal(err)
	}
	var out Output
	if err := json.Unmarshal([]byte(res.Content), &out); err != nil {
		t.Fatal(err)
	}
	body, _ := out.Body.(string)
	if strings.Contains(res.Content, "SECRET") || !strings.Contains(body, "[env.E]") || !strings.HasSuffix(body, "[... truncated at 1000 bytes]") {
		t.Errorf("result %s", res.Content[990:])
	}
	if out.Headers["Location"] != "/next?token=[env.E]" {
		t.Errorf("location %q", out.Headers["Location"])
	}
}
