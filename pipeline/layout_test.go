package pipeline

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The layers under transforms/, bottom up: the values that flow between the stages, the
// plumbing the stages share (ClickHouse: URL, connection, TLS, settings, retry, error classes,
// schema, types, conversion, encoding; Pub/Sub: checks, acknowledgement, the Dataflow read and
// its decoding; secrets: Secret Manager, Cloud Storage, files), and the stages, which
// are peers in data-flow order.
var (
	valuePackages    = []string{"flow"}
	plumbingPackages = []string{"chclient", "chtype", "schema", "convert", "evolve", "psclient", "pubsubio", "secret", "text"}
	stagePackages    = []string{"source", "udf", "route", "parse", "batch", "write", "deadletter", "ack"}
)

const module = "github.com/ch-beam/pubsub-to-clickhouse/"

// TestLayout holds the layering: a value package imports nothing of the module; a plumbing
// package imports only values and plumbing; a stage imports only values and plumbing (never a
// peer or a later stage); nothing outside tests imports the test helpers of internal/; every
// package under transforms/ belongs to a layer. Imports are read with go list, directly and
// transitively (-deps).
func TestLayout(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	layer := map[string]string{}
	for _, p := range valuePackages {
		layer["transforms/"+p] = "values"
	}
	for _, p := range plumbingPackages {
		layer["transforms/"+p] = "plumbing"
	}
	for _, p := range stagePackages {
		layer["transforms/"+p] = "stage"
	}
	allowed := map[string][]string{"values": nil, "plumbing": {"values", "plumbing"}, "stage": {"values", "plumbing"}}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(fields[0], module)
		var deps []string
		for _, d := range fields[1:] {
			if rel, ok := strings.CutPrefix(d, module); ok {
				deps = append(deps, rel)
			}
		}
		if strings.HasPrefix(pkg, "transforms/") {
			l, ok := layer[pkg]
			if !ok {
				t.Errorf("%s belongs to no layer: add it to layout_test.go's lists", pkg)
				continue
			}
			for _, d := range deps {
				if dl := layer[d]; !slices.Contains(allowed[l], dl) {
					t.Errorf("%s (%s) imports %s (%s): a %s may import only %v", pkg, l, d, orWhat(dl), l, allowed[l])
				}
			}
		}
		if !strings.HasPrefix(pkg, "internal/") && !strings.HasPrefix(pkg, "integration_test") {
			for _, d := range deps {
				if strings.HasPrefix(d, "internal/") {
					t.Errorf("%s imports the test helper %s", pkg, d)
				}
			}
		}
	}
}

func orWhat(l string) string {
	if l == "" {
		return "outside transforms/"
	}
	return l
}
