package main

import (
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/ch-beam/pubsub-to-clickhouse/pipeline"
)

// helpWidth is the width, in characters, that --help wraps the flags' descriptions to.
const helpWidth = 100

// printHelp writes the program's --help to w: how to call it and its subcommands, the template
// parameters of fs by group with their defaults, the pipeline's other flags, then the runner's
// (the Beam SDK's) flags, and which runner is the default.
func printHelp(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintf(w, "pubsub-to-clickhouse reads JSON messages from a Pub/Sub subscription and inserts them into a ClickHouse table.\n")
	fmt.Fprintf(w, "Version %s.\n\n", Version())
	fmt.Fprintf(w, "Usage:\n")
	fmt.Fprintf(w, "  pubsub-to-clickhouse [flags]                 run the pipeline (the flags below)\n")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-44s %s\n", "pubsub-to-clickhouse "+c.name+" "+c.args, c.summary)
	}
	fmt.Fprintf(w, "  %-44s %s\n", "pubsub-to-clickhouse --version", "the version")
	fmt.Fprintln(w)
	for _, l := range wrap("The default runner is prism, which runs the pipeline in this process (local runs, against a Pub/Sub "+
		"emulator with PUBSUB_EMULATOR_HOST); --runner=dataflow submits a Dataflow job, and under the Flex Template launcher "+
		"(FLEX_TEMPLATE_GO_BINARY set) the runner is dataflow. Flags take --name=value.", helpWidth) {
		fmt.Fprintln(w, l)
	}

	params := pipeline.Parameters()
	shown := map[string]bool{"help": true, "h": true}
	fmt.Fprintf(w, "\nTemplate parameters (docs/parameters.md), by group:\n")
	for _, group := range pipeline.Groups() {
		fmt.Fprintf(w, "\n %s:\n", group)
		for _, p := range params {
			if p.Group == group {
				printFlag(w, fs.Lookup(p.Name), p.Default)
				shown[p.Name] = true
			}
		}
	}
	fmt.Fprintf(w, "\nOther flags of the pipeline (not template parameters):\n")
	for _, p := range params {
		if !shown[p.Name] {
			printFlag(w, fs.Lookup(p.Name), p.Default)
			shown[p.Name] = true
		}
	}
	fmt.Fprintf(w, "\nRunner flags (the Beam Go SDK's; docs/deploy.md for those a Dataflow launch uses):\n")
	var rest []*flag.Flag
	fs.VisitAll(func(f *flag.Flag) {
		if !shown[f.Name] {
			rest = append(rest, f)
		}
	})
	sort.Slice(rest, func(i, j int) bool { return rest[i].Name < rest[j].Name })
	for _, f := range rest {
		def := f.DefValue
		if def == "false" || def == "0" {
			def = ""
		}
		printFlag(w, f, def)
	}
}

// printFlag writes one flag as the flag package's PrintDefaults does ("  -name value" and the
// usage indented below it), the usage wrapped to helpWidth, and "(default def)" when def is not
// empty. A nil f writes nothing.
func printFlag(w io.Writer, f *flag.Flag, def string) {
	if f == nil {
		return
	}
	name, usage := flag.UnquoteUsage(f)
	line := "  -" + f.Name
	if name != "" {
		line += " " + name
	}
	lines := wrap(usage, helpWidth-8)
	if def != "" && !strings.Contains(usage, "(default") {
		if d, last := "(default "+def+")", lines[len(lines)-1]; len(last)+1+len(d) <= helpWidth-8 {
			lines[len(lines)-1] = last + " " + d
		} else {
			lines = append(lines, d)
		}
	}
	fmt.Fprintln(w, line)
	for _, l := range lines {
		fmt.Fprintln(w, "        "+l)
	}
}

// wrap splits s into lines of at most width characters at spaces (a longer word is a line of its
// own); newlines in s are kept.
func wrap(s string, width int) []string {
	var lines []string
	for _, para := range strings.Split(s, "\n") {
		line := ""
		for _, word := range strings.Fields(para) {
			switch {
			case line == "":
				line = word
			case len(line)+1+len(word) > width:
				lines = append(lines, line)
				line = word
			default:
				line += " " + word
			}
		}
		lines = append(lines, line)
	}
	return lines
}
