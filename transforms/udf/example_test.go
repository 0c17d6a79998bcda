package udf

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestWorkedExample runs the function of docs/parameters.md's worked example on its messages and
// checks what the page says of them: the JSON of the row, the drop, the dead letter's error.
func TestWorkedExample(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "parameters.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, example, ok := strings.Cut(string(doc), "### A worked example")
	if !ok {
		t.Fatal(`docs/parameters.md has no "### A worked example"`)
	}
	_, js, ok := strings.Cut(example, "```js\n")
	js, _, ok2 := strings.Cut(js, "```")
	if !ok || !ok2 {
		t.Fatal("the worked example has no ```js block")
	}
	fn := load(t, js, "transform", time.Second)

	web := messageInfo{ID: "1", Attributes: map[string]string{"source": "web"}}
	out, drop, err := fn.Apply(`{"id": "e-1001", "user": {"id": 42, "country": "NO"}, "event": "purchase", "amount": "19.90", "test": false}`, web)
	if want := `{"event_id":"e-1001","user_id":42,"country":"NO","event_type":"purchase","amount":"19.90","source":"web"}`; err != nil || drop || out != want {
		t.Errorf("the first message gives %q, drop %v, %v; want %s", out, drop, err, want)
	}
	if _, drop, err := fn.Apply(`{"id": "e-1002", "user": {"id": 7, "country": "SE"}, "event": "view", "test": true}`, messageInfo{}); err != nil || !drop {
		t.Errorf("the second message: drop %v, %v; want dropped", drop, err)
	}
	_, _, err = fn.Apply(`{"id": "e-1003", "event": "view"}`, messageInfo{})
	if err == nil || !strings.Contains(example, "`"+err.Error()+"`") {
		t.Errorf("the third message's error %q is not the one the page shows", err)
	}
	// Without the attribute, source is left out of the JSON, so the column's DEFAULT applies.
	out, _, _ = fn.Apply(`{"id": "e-1004", "user": {"id": 1, "country": "DK"}, "event": "view"}`, messageInfo{Attributes: map[string]string{}})
	if strings.Contains(out, "source") || !strings.Contains(out, `"amount":null`) {
		t.Errorf("a message without the attribute source and without an amount gives %s", out)
	}
}
