package views

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a-h/templ/parser/v2"
)

// templ v0.3.977 mis-generates a text run that mixes two or more
// expressions with text ("{ a }. Payout { b }" prints b where a belongs),
// so the components write such sentences in Go (one expression each) or
// as separate elements. This test reads every component and fails on a
// text run that holds two or more expressions and any text, so that the
// bug cannot come back unseen.
func TestNoTextRunMixesTwoExpressionsWithText(t *testing.T) {
	files, err := filepath.Glob("*.templ")
	if err != nil || len(files) == 0 {
		t.Fatalf("no templ files: %v", err)
	}
	for _, name := range files {
		f, err := parser.Parse(name)
		if err != nil {
			t.Fatalf("parse %s: %v", name, err)
		}
		for _, n := range f.Nodes {
			tmpl, ok := n.(*parser.HTMLTemplate)
			if !ok {
				continue
			}
			component, _, _ := strings.Cut(tmpl.Expression.Value, "(")
			for _, run := range mixedRuns(tmpl.Children) {
				t.Errorf("%s, %s, line %d: %s mixes expressions with text: write the sentence in Go or split it into elements",
					name, component, run.line+1, run.text)
			}
		}
	}
}

// textRun is a run of sibling text and expressions, as written.
type textRun struct {
	line uint32
	text string
}

// mixedRuns walks nodes and returns the text runs with two or more
// expressions and some text other than white space.
func mixedRuns(nodes []parser.Node) []textRun {
	var out []textRun
	var run []parser.Node
	flush := func() {
		exprs, words := 0, false
		var b strings.Builder
		var line uint32
		for i, n := range run {
			switch n := n.(type) {
			case *parser.StringExpression:
				exprs++
				if i == 0 || line == 0 {
					line = n.Expression.Range.From.Line
				}
				fmt.Fprintf(&b, "{ %s }", n.Expression.Value)
			case *parser.Text:
				if strings.TrimSpace(n.Value) != "" {
					words = true
				}
				if i == 0 {
					line = n.Range.From.Line
				}
				b.WriteString(n.Value)
			}
			b.WriteString(" ")
		}
		if exprs >= 2 && words {
			out = append(out, textRun{line: line, text: strings.TrimSpace(b.String())})
		}
		run = run[:0]
	}
	for _, n := range nodes {
		switch n := n.(type) {
		case *parser.Text, *parser.StringExpression:
			run = append(run, n)
			continue
		case *parser.Whitespace:
			continue
		}
		flush()
		switch n := n.(type) {
		case *parser.Element:
			out = append(out, mixedRuns(n.Children)...)
		case *parser.IfExpression:
			out = append(out, mixedRuns(n.Then)...)
			for _, e := range n.ElseIfs {
				out = append(out, mixedRuns(e.Then)...)
			}
			out = append(out, mixedRuns(n.Else)...)
		case *parser.ForExpression:
			out = append(out, mixedRuns(n.Children)...)
		case *parser.SwitchExpression:
			for _, c := range n.Cases {
				out = append(out, mixedRuns(c.Children)...)
			}
		case *parser.TemplElementExpression:
			out = append(out, mixedRuns(n.Children)...)
		}
	}
	flush()
	return out
}
