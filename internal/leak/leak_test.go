package leak

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
)

func TestFound(t *testing.T) {
	const secret = "Leak-pw-0b7d"
	inner, _ := json.Marshal(map[string]any{"Password": secret, "URL": "clickhouse://h:9000"})
	framed := append([]byte("\x0a\x05proto\x12"), inner...)
	layered := base64.StdEncoding.EncodeToString([]byte(`{"serialized_fn":"` + base64.StdEncoding.EncodeToString(framed) + `"}`))
	for name, tc := range map[string]struct {
		data string
		want bool
	}{
		"text":                 {"msg=x password=" + secret, true},
		"base64":               {"payload: " + base64.StdEncoding.EncodeToString([]byte("xx"+secret+"yy")) + " end", true},
		"base64 url, unpadded": {base64.RawURLEncoding.EncodeToString([]byte("abc" + secret)), true},
		"base64 in base64":     {layered, true},
		"mid-way in a run":     {"QUJD" + base64.StdEncoding.EncodeToString([]byte("....."+secret+".")), true},
		"absent":               {layered[:20] + "xxxxx" + strings.Repeat("A", 40), false},
		"redacted":             {`{"clickHousePassword": "xxxxx"}`, false},
	} {
		if got := Found([]byte(tc.data), secret); got != tc.want {
			t.Errorf("%s: Found = %v, want %v", name, got, tc.want)
		}
	}
	if Found([]byte("anything"), "") {
		t.Error("the empty secret is found")
	}
}
