package psclient

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestParseSubscriptionAndTopic(t *testing.T) {
	tests := []struct {
		parse func(string) (Name, error)
		in    string
		want  Name
		err   string // part of the error; "" for none
	}{
		{ParseSubscription, "projects/my-project/subscriptions/events", Name{"my-project", Subscriptions, "events"}, ""},
		{ParseSubscription, "projects/example.com:my-project/subscriptions/a.b~c+d%e_f-g", Name{"example.com:my-project", Subscriptions, "a.b~c+d%e_f-g"}, ""},
		{ParseSubscription, "projects/123456789012/subscriptions/events", Name{"123456789012", Subscriptions, "events"}, ""},
		{ParseSubscription, "projects/my-project/topics/events", Name{}, "not of a subscription"},
		{ParseSubscription, "projects/my-project/subscriptions/goog", Name{}, `must not start with "goog"`},
		{ParseSubscription, "projects/0123/subscriptions/events", Name{}, "without a leading zero"},
		{ParseSubscription, "", Name{}, "must have the form projects/<project>/subscriptions/<name>"},
		{ParseTopic, "projects/my-project/topics/dead", Name{"my-project", Topics, "dead"}, ""},
		{ParseTopic, "projects/my-project/subscriptions/dead", Name{}, "not of a topic"},
		{ParseTopic, "projects/my-project/topics/d", Name{}, "must be 3 to 255 characters"},
		{ParseTopic, "topics/dead", Name{}, "must have the form projects/<project>/topics/<name>"},
	}
	for _, tt := range tests {
		got, err := tt.parse(tt.in)
		if tt.err == "" {
			if err != nil || got != tt.want || got.String() != tt.in {
				t.Errorf("parse(%q) = %+v (%s), %v; want %+v", tt.in, got, got, err, tt.want)
			}
			continue
		}
		var ne *NameError
		if !errors.As(err, &ne) || !strings.Contains(err.Error(), tt.err) || got != (Name{}) {
			t.Errorf("parse(%q) = %+v, %v; want a *NameError containing %q", tt.in, got, err, tt.err)
		}
	}
}

// nameForms are the forms of a Pub/Sub name, each accepted by ParseSubscription when written
// with "subscriptions" and by ParseTopic with "topics", or refused by both. {c} stands for the
// collection.
var nameForms = []string{
	"projects/my-project/{c}/my-sub",
	"projects/my-project-123/{c}/Events.sub_1~x+y%20z",
	"projects/example.com:my-project/{c}/events",
	"projects/a.b-c.example:abcdef/{c}/events",
	"projects/123456789012/{c}/events",
	"projects/1/{c}/events",
	"projects/1234567890123456789/{c}/events",
	"projects/abcdef/{c}/" + strings.Repeat("a", 255),
	"projects/abcdefghijklmnopqrstuvwxyz1234/{c}/abc",
	"projects/my-project/{c}/goo", "projects/my-project/{c}/gooo", "projects/my-project/{c}/gog", "projects/my-project/{c}/g-x",
	"projects/my-project/{c}/Google", "projects/my-project/{c}/go" + strings.Repeat("o", 253),
	// refused
	"", "my-sub", "projects/my-project/{c}/", "projects/My-Project/{c}/my-sub",
	"projects/my-project/{c}/1sub", "projects/my-project/{c}/ab", "projects/my-project/{c}/my sub",
	" projects/my-project/{c}/my-sub", "projects/my-project/{c}/my-sub/extra", "projects/my-project-/{c}/my-sub",
	"projects/0123456789/{c}/events", "projects/12345678901234567890/{c}/events", "projects/abcde/{c}/events",
	"projects/abcdefghijklmnopqrstuvwxyz12345/{c}/abc", "projects/1project/{c}/events", "projects/my_project/{c}/events",
	"projects/example:my-project/{c}/events", "projects/-x.com:my-project/{c}/events", "projects//{c}/events",
	"projects/my-project/{c}/goog-events", "projects/my-project/{c}/goog",
	"projects/my-project/{c}/go", "projects/my-project/{c}/goo" + strings.Repeat("o", 253), "projects/my-project/{c}/events!", "projects/abcdef/{c}/" + strings.Repeat("a", 256),
	"projects/my-project/{c}/events\n", "projects/my-project/other/events",
}

// TestMetadataRegexesMatchName checks the regexes of inputSubscription and deadLetterTopic in
// metadata.json (what the Dataflow console checks) against ParseSubscription and ParseTopic
// (what the binary checks): on every form of nameForms, and on each form with the other
// collection, the regex and the parser agree.
func TestMetadataRegexesMatchName(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "metadata.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Parameters []struct {
			Name    string   `json:"name"`
			Regexes []string `json:"regexes"`
		} `json:"parameters"`
	}
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("metadata.json: %v", err)
	}
	regexes := map[string][]string{}
	for _, p := range m.Parameters {
		regexes[p.Name] = p.Regexes
	}
	for _, tc := range []struct {
		param      string
		collection Collection
		parse      func(string) (Name, error)
		optional   bool // the regex accepts "" too (an unset optional parameter)
	}{
		{"inputSubscription", Subscriptions, ParseSubscription, false},
		{"deadLetterTopic", Topics, ParseTopic, true},
	} {
		if len(regexes[tc.param]) == 0 {
			t.Errorf("metadata.json: %s has no regexes", tc.param)
			continue
		}
		var res []*regexp.Regexp
		for _, expr := range regexes[tc.param] {
			res = append(res, regexp.MustCompile(expr))
		}
		accepted, refused := 0, 0
		for _, form := range nameForms {
			for _, c := range []Collection{Subscriptions, Topics} {
				v := strings.ReplaceAll(form, "{c}", string(c))
				matches := true
				for _, re := range res {
					matches = matches && re.MatchString(v)
				}
				_, err := tc.parse(v)
				want := err == nil || tc.optional && v == ""
				if matches != want {
					t.Errorf("%s %q: metadata.json's regex matches: %v; the %s parser says: %v", tc.param, v, matches, tc.collection.singular(), err)
				}
				if err == nil {
					accepted++
				} else {
					refused++
				}
			}
		}
		if accepted < 15 || refused < 20 {
			t.Errorf("%s: %d forms accepted and %d refused; the table lost its examples", tc.param, accepted, refused)
		}
	}
}
