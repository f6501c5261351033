// Package text turns documents into the plain text that agents remember and
// answer from, and cuts that text into token-bounded chunks.
//
// It covers four steps of the memory pipeline:
//
//   - [Detect] decides whether a fetched or supplied document is HTML, PDF,
//     Markdown or plain text;
//   - [Extract] (and the per-kind [ExtractHTML], [ExtractPDF] and
//     [MarkdownText]) produces readable text without boilerplate such as
//     menus, scripts or cookie banners;
//   - [Tokens] counts tokens with the cl100k_base encoding, loaded from an
//     embedded vocabulary so that no network access is needed at run time;
//   - [Split] cuts text into overlapping chunks that respect a token cap and
//     prefer paragraph and sentence boundaries, each with the path of the
//     headings it stands under ([Page].Headings: HTML h1-h6, Markdown
//     headings, the sections, terms and numbered questions of plain text laid
//     out as man pages and FAQs are).
//
// All functions are safe for concurrent use and deterministic.
package text
