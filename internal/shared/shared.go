// Package shared finds the team's shared test inputs (the conversion cases and the real-event
// corpora), which live beside the repository in ../shared and are not copied into it.
package shared

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// Dir returns the shared directory: $SHARED_DIR, else ../shared beside the module root, else
// /work/shared. It fails the test when none exists.
func Dir(t testing.TB) string {
	t.Helper()
	var candidates []string
	if d := os.Getenv("SHARED_DIR"); d != "" {
		candidates = append(candidates, d)
	}
	if wd, err := os.Getwd(); err == nil {
		for d := wd; ; d = filepath.Dir(d) {
			if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
				candidates = append(candidates, filepath.Join(d, "..", "shared"))
				break
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	candidates = append(candidates, "/work/shared")
	for _, d := range candidates {
		if _, err := os.Stat(filepath.Join(d, "cases", "conversion-cases.json")); err == nil {
			return d
		}
	}
	t.Fatalf("the shared test inputs are not in any of %q; set SHARED_DIR", candidates)
	return ""
}

// Case is one entry of cases/conversion-cases.json (see its README).
type Case struct {
	ID            string  `json:"id"`
	Source        string  `json:"source"`
	DDL           string  `json:"ddl"`
	Payload       *string `json:"payload"`
	PayloadBase64 string  `json:"payloadBase64"`
	Expect        struct {
		Row        map[string]string `json:"row"`
		DeadLetter *struct {
			ErrorContains []string `json:"errorContains"`
		} `json:"deadLetter"`
	} `json:"expect"`
	Note  string `json:"note"`
	Needs string `json:"needs"`
}

// Data returns the case's message bytes.
func (c Case) Data() []byte {
	if c.Payload != nil {
		return []byte(*c.Payload)
	}
	b, err := base64.StdEncoding.DecodeString(c.PayloadBase64)
	if err != nil {
		panic(fmt.Sprintf("case %s: payloadBase64: %v", c.ID, err))
	}
	return b
}

// Cases loads every conversion case.
func Cases(t testing.TB) []Case {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(Dir(t), "cases", "conversion-cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []Case
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatalf("conversion-cases.json: %v", err)
	}
	if len(cases) == 0 {
		t.Fatal("conversion-cases.json holds no case")
	}
	return cases
}
