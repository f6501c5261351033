// Package markdown renders text written in Markdown (a model's reply) as HTML safe to put in a
// page: goldmark renders it, any HTML the text holds is shown as text rather than obeyed, images
// become links to them (a reply never makes the page fetch anything unasked: a URL may carry
// what the reply holds to whoever serves it), and bluemonday's policy for user content keeps
// only harmless elements and attributes, with links to other sites opening apart (target
// _blank, rel noopener).
package markdown

import (
	"bytes"
	"html"

	"github.com/microcosm-cc/bluemonday"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/util"
)

var (
	md = goldmark.New(goldmark.WithRendererOptions(renderer.WithNodeRenderers(util.Prioritized(rawAsText{}, 100))))
	// policy is what survives in the page: bluemonday's for user content.
	policy = bluemonday.UGCPolicy().AddTargetBlankToFullyQualifiedLinks(true)
)

// HTML is text rendered as safe HTML.
func HTML(text string) string {
	var b bytes.Buffer
	if err := md.Convert([]byte(text), &b); err != nil {
		return "<p>" + html.EscapeString(text) + "</p>"
	}
	return policy.Sanitize(b.String())
}

// rawAsText renders the HTML a text holds (inline or as a block) as the text it is, and images
// as links to them.
type rawAsText struct{}

func (rawAsText) RegisterFuncs(r renderer.NodeRendererFuncRegisterer) {
	r.Register(ast.KindRawHTML, func(w util.BufWriter, src []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
		if entering {
			segs := n.(*ast.RawHTML).Segments
			for i := range segs.Len() {
				seg := segs.At(i)
				_, _ = w.WriteString(html.EscapeString(string(seg.Value(src))))
			}
		}
		return ast.WalkSkipChildren, nil
	})
	r.Register(ast.KindImage, func(w util.BufWriter, _ []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
		img := n.(*ast.Image)
		switch {
		case entering:
			_, _ = w.WriteString(`<a href="` + html.EscapeString(string(img.Destination)) + `">`)
			if !img.HasChildren() {
				_, _ = w.WriteString(html.EscapeString(string(img.Destination)))
			}
		default:
			_, _ = w.WriteString("</a>")
		}
		return ast.WalkContinue, nil
	})
	r.Register(ast.KindHTMLBlock, func(w util.BufWriter, src []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		b := n.(*ast.HTMLBlock)
		_, _ = w.WriteString("<p>")
		lines := b.Lines()
		for i := range lines.Len() {
			seg := lines.At(i)
			_, _ = w.WriteString(html.EscapeString(string(seg.Value(src))))
		}
		if b.HasClosure() {
			_, _ = w.WriteString(html.EscapeString(string(b.ClosureLine.Value(src))))
		}
		_, _ = w.WriteString("</p>\n")
		return ast.WalkSkipChildren, nil
	})
}
