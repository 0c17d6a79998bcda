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

// add takes the new fields of a message's payload (conv says which), read at where, and returns
// their names, the refused ones among them.
func (n *newColumns) add(conv *convert.Converter, payload []byte, where string) (names []string) {
	_ = conv.NewFields(payload, func(name string, value []byte) error {
		k, err := evolve.Infer(value)
		if err != nil || k == evolve.None {
			return nil
		}
		names = append(names, name)
		if _, ok := n.refused[name]; ok {
			return nil
		}
		if r := n.checker.Check(name, value); r != nil {
			n.refused[name] = r
			n.refOrd = append(n.refOrd, name)
			return nil
		}
		c, ok := n.first[name]
		if !ok {
			n.order = append(n.order, name)
			c = newColumn{kind: k, where: where, more: k}
		}
		c.more = evolve.Merge(c.more, k)
		n.first[name] = c
		return nil
	})
	return names
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
