package main

import (
	"bytes"
	"flag"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestHelpOrder checks that --help lists the template parameters in metadata.json's order, by
// its groups, each with its default, before the runner's flags.
func TestHelpOrder(t *testing.T) {
	m := readMetadata(t)
	var wantGroups, wantParams []string
	for _, p := range m.Parameters {
		if len(wantGroups) == 0 || wantGroups[len(wantGroups)-1] != p.GroupName {
			wantGroups = append(wantGroups, p.GroupName)
		}
	}
	// By group, in the order the groups first appear; within a group in any order (the help
	// keeps the order of pipeline.Options).
	for _, g := range wantGroups {
		var names []string
		for _, p := range m.Parameters {
			if p.GroupName == g {
				names = append(names, p.Name)
			}
		}
		slices.Sort(names)
		wantParams = append(wantParams, names...)
	}
	fs, _ := templateFlags()
	flag.CommandLine.VisitAll(func(f *flag.Flag) { fs.Var(f.Value, f.Name, f.Usage) }) // the runner's flags
	var b bytes.Buffer
	printHelp(&b, fs)
	out := b.String()
	params, runner, ok := strings.Cut(out, "\nRunner flags")
	if !ok {
		t.Fatalf("no runner flags section:\n%s", out)
	}
	var gotGroups, gotParams []string
	for _, m := range regexp.MustCompile(`(?m)^ (\S[^:]*):$`).FindAllStringSubmatch(params, -1) {
		gotGroups = append(gotGroups, m[1])
	}
	flags := regexp.MustCompile(`(?m)^  -(\S+)`)
	for _, m := range flags.FindAllStringSubmatch(params, -1) {
		gotParams = append(gotParams, m[1])
	}
	gotParams = gotParams[:min(len(gotParams), len(wantParams))]
	for start := 0; start < len(gotParams); {
		// Sort each group's run of parameters.
		end := start
		group := groupOf(m, gotParams[start])
		for end < len(gotParams) && groupOf(m, gotParams[end]) == group {
			end++
		}
		slices.Sort(gotParams[start:end])
		start = end
	}
	if diff := cmp.Diff(wantGroups, gotGroups); diff != "" {
		t.Errorf("groups (-metadata.json +help):\n%s", diff)
	}
	if diff := cmp.Diff(wantParams, gotParams); diff != "" {
		t.Errorf("parameters (-metadata.json +help):\n%s", diff)
	}
	blocks := map[string]string{} // per flag, its lines
	for _, b := range strings.Split(params, "\n  -")[1:] {
		name, _, _ := strings.Cut(b, "\n")
		name, _, _ = strings.Cut(name, " ")
		blocks[name] = b
	}
	for _, p := range m.Parameters {
		if p.DefaultValue != "" && !strings.Contains(blocks[p.Name], "(default "+p.DefaultValue+")") {
			t.Errorf("--help does not give %s's default %s", p.Name, p.DefaultValue)
		}
	}
	if !strings.Contains(params, "The default runner is prism") || !strings.Contains(runner, "\n  -runner ") {
		t.Errorf("--help does not say the default runner, or lacks -runner:\n%s", out)
	}
	for _, c := range []string{"check", "publish", "replay", "infer"} {
		if !strings.Contains(params, "pubsub-to-clickhouse "+c+" ") {
			t.Errorf("--help does not list the subcommand %s", c)
		}
	}
}

// groupOf returns the groupName of parameter name in m, "" if it has none.
func groupOf(m templateMetadata, name string) string {
	for _, p := range m.Parameters {
		if p.Name == name {
			return p.GroupName
		}
	}
	return ""
}
