package config

import (
	"fmt"
	"strings"
)

//go:generate go run ./gen ../../../docs/configuration.md

// The lines that enclose the generated table in docs/configuration.md; the prose around them is
// written by hand.
const (
	TableStart = "<!-- The table below is generated from Vars (shared/kit/config): edit Vars, then run `go generate ./shared/kit/config`. -->"
	TableEnd   = "<!-- End of the generated table. -->"
)

// Table renders Vars as the Markdown table of docs/configuration.md.
func Table() string {
	var b strings.Builder
	b.WriteString("| variable | default | meaning |\n|---|---|---|\n")
	for _, v := range Vars {
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", v.Name, cell(v.Default), cell(v.Description))
	}
	return b.String()
}

func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// Page returns page with the lines between TableStart and TableEnd replaced by Table.
func Page(page string) (string, error) {
	start := strings.Index(page, TableStart+"\n")
	end := strings.Index(page, TableEnd)
	if start < 0 || end < start {
		return "", fmt.Errorf("the page lacks the lines %q and %q around its table", TableStart, TableEnd)
	}
	head := page[:start+len(TableStart)+1]
	return head + Table() + page[end:], nil
}
