package main

// check with addNewColumns: the columns the messages of the files would add, with their types,
// by the rule and limits the parse stage applies; check adds none.

import (
	"fmt"
	"strconv"

	"github.com/ch-beam/pubsub-to-clickhouse/transforms/convert"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/evolve"
	"github.com/ch-beam/pubsub-to-clickhouse/transforms/flow"
)

// newColumns gathers, for one table, the columns its messages' new fields would become.
type newColumns struct {
	checker *evolve.Checker
	rule    evolve.Rule
	order   []string                   // the fields, in order of first appearance
	first   map[string]newColumn       // by field
	refused map[string]*evolve.Refusal // by field, what the limits say of its name
	refOrd  []string                   // the refused fields, in order of first appearance
}

// newColumn is the column a field would become: the type of its first value, which is the one
// the parse stage gives it, and the message it is in.
type newColumn struct {
	kind  evolve.Kind
	where string
	more  evolve.Kind // the kinds of all its values merged: another type when it differs
}

func newNewColumns(c *evolve.Checker, r evolve.Rule) *newColumns {
	return &newColumns{checker: c, rule: r, first: map[string]newColumn{}, refused: map[string]*evolve.Refusal{}}
}

// add takes the new fields of a message's payload (conv says which), read at where, by the
// rules of the parse stage (evolve.Checker.Fields), and returns their names. dead is the
// message's dead letter in the pipeline: a field given twice, or fields refused while
// unknownFieldsColumn is unset (keepsUnknown false); such a message adds no column, so none of
// its fields is counted as one (its refusals are, for the summary).
func (n *newColumns) add(conv *convert.Converter, payload []byte, where string, keepsUnknown bool) (names []string, dead error) {
	// The columns the earlier messages would add count as the table's: the parse stage adds them
	// before it reads this message.
	fresh, refused, err := n.checker.Fields(conv, payload, func(name string) bool { _, ok := n.first[name]; return ok })
	if err != nil {
		return nil, err
	}
	for _, r := range refused {
		names = append(names, r.Field)
		if _, ok := n.refused[r.Field]; !ok {
			n.refused[r.Field] = r
			n.refOrd = append(n.refOrd, r.Field)
		}
	}
	if len(refused) > 0 && !keepsUnknown {
		return nil, evolve.Refusals(refused)
	}
	for _, f := range fresh {
		names = append(names, f.Name)
		c, ok := n.first[f.Name]
		if !ok {
			n.order = append(n.order, f.Name)
			c = newColumn{kind: f.Kind, where: where, more: f.Kind}
		}
		c.more = evolve.Merge(c.more, f.Kind)
		n.first[f.Name] = c
	}
	return names, nil
}

// print writes the columns table would get, and the fields refused.
func (n *newColumns) print(cio *cmdIO, database, table string) {
	if len(n.order) == 0 && len(n.refOrd) == 0 {
		fmt.Fprintf(cio.Out, "addNewColumns: no new field: the messages add no column to %s\n", flow.OneLine(table))
		return
	}
	limit := n.checker.Limits().Max
	fmt.Fprintf(cio.Out, "addNewColumns: the messages would add %s to %s (check adds none):\n", count(len(n.order), "column"), flow.OneLine(table))
	for i, name := range n.order {
		c := n.first[name]
		line := fmt.Sprintf("  %s", n.rule.Server.AddColumn(database, table, name, n.rule.Definition(c.kind), n.checker.Limits().OnCluster))
		line += "  -- from " + flow.OneLine(c.where)
		if c.more != c.kind && n.rule.Type(c.more) != n.rule.Type(c.kind) {
			line += "; later values want " + n.rule.Type(c.more) + ": those the first type does not take are dead letters"
		}
		if i >= limit {
			line += "; beyond addNewColumnsMax " + strconv.Itoa(limit) + " for one worker"
		}
		fmt.Fprintln(cio.Out, flow.OneLine(line))
	}
	for _, name := range n.refOrd {
		fmt.Fprintf(cio.Out, "  refused: %s; its messages would be dead letters, or keep it in unknownFieldsColumn when that is set\n",
			flow.OneLine(n.refused[name].Error()))
	}
}
