package web_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestScreenshots writes the pictures of the docs (make screenshots):
// as PNG: the inbox with a call waiting for approval and one for resume data,
// a run page, and a resume form refused at its field, to the directory
// $AGENTCTL_SCREENSHOTS. Without it, it is skipped.
func TestScreenshots(t *testing.T) {
	dir := os.Getenv("AGENTCTL_SCREENSHOTS")
	if dir == "" {
		t.Skip("AGENTCTL_SCREENSHOTS names no directory (make screenshots)")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	in := newInbox(t)
	b := browser(t)
	in.signIn(b, "alice")
	done := in.start("ops")
	run(t, b, chromedp.Navigate(in.url+"/"), chromedp.Click(chromedp.CSS(fmt.Sprintf(`article[data-run="%s"] button.approve`, done))),
		chromedp.WaitVisible(chromedp.CSS(`.flash`)))
	in.start("ops")
	rid := in.start("release")
	shot := func(name string) {
		t.Helper()
		png, err := chromedp.Run(b, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", filepath.Join(dir, name))
	}
	run(t, b, chromedp.Navigate(in.url+"/"), chromedp.WaitVisible(chromedp.CSS(`article[data-run="`+rid+`"]`)))
	shot("inbox.png")
	run(t, b, chromedp.Navigate(in.url+"/runs/"+done), chromedp.WaitVisible(chromedp.CSS(`table.calls`)))
	shot("run.png")
	run(t, b, chromedp.Navigate(in.url+"/runs/"+rid),
		chromedp.SetValue(chromedp.CSS(fmt.Sprintf(`#d-%s-call_1-ticket`, rid)), "CHG-seven"),
		chromedp.Click(chromedp.CSS(`button.resume`)),
		chromedp.WaitVisible(chromedp.CSS(`.field-error`)))
	shot("resume.png")
}
