// Package index is the in-memory search index agents answer from.
//
// # Segments
//
// An index is a set of immutable [Segment] values; one segment holds all the
// chunks of one version of one memory source. A segment is an inverted index:
// a term dictionary, compact postings (doc ordinal, term frequency) per term,
// the length of every doc, and optionally the docs' embeddings normalised to
// unit length. It keeps ids, never texts. Segments are built once with
// [NewSegment] and then shared by any number of concurrent searches; the
// caller decides which segments are valid for a query (the current version of
// each source of an agent) and passes them to [Search].
//
// # Analysis
//
// Indexing and queries run one analyzer: text is split into runs of Unicode
// letters and digits, lowercased, with Latin diacritics and compatibility
// forms folded; English stopwords are dropped and ASCII words are reduced with
// the Snowball English stemmer ("running" and "runs" both become "run"). Han,
// Hiragana and Katakana, written without spaces, are indexed as overlapping
// rune bigrams so Chinese and Japanese text is searchable. When indexing, the
// parts of identifiers ("DefaultGODEBUG": "default", "godebug") and the
// concatenation of hyphenated words ("built-in": "builtin") are indexed too,
// without counting in the doc's length, so prose and code spellings meet.
//
// # Query expansion: related terms
//
// A query also searches for the words users and documents use for one
// another: a small hand-written list of groups of related words and phrases
// (folder and directory, unpack and extract, abbreviations, British and
// American spellings, numbers in words and digits). A query term, or a run of
// them forming a listed phrase, adds the terms of the other members of its
// group that the query does not hold, each weighted by half its BM25 idf
// weight, so that a passage in the user's own words still ranks first.
//
// # Titles
//
// A doc may carry a title besides its text: memory gives each chunk its page's
// title and the path of the headings it stands under. The title is analysed
// like the text and its terms counted in the doc's term frequencies, each
// occurrence as one in the text (a simplified BM25F with a title weight of 1,
// the weight that measured best), but not in the doc's length, so that a
// long section path does not penalise its passages.
//
// # Lexical ranking: BM25
//
// Docs are scored with Okapi BM25, k1 = 1.2 and b = 0.75:
//
//	score(d) = Σ over distinct query terms t in d of
//	           w(t) · idf(t) · tf·(k1+1) / (tf + k1·(1 − b + b·dl/avgdl))
//	idf(t)   = ln(1 + (N − df(t) + 0.5) / (df(t) + 0.5))
//
// where w(t) is 1 for the query's own terms and 0.5 for related terms, tf is
// the frequency of t in d's text and title and dl the length of its text in
// terms. N, avgdl and
// df are computed over all the segments of the query, so the segments behave
// as one corpus and scores do not depend on how docs are split among them.
//
// # Hybrid ranking: Reciprocal Rank Fusion
//
// When the query carries an embedding and segments hold vectors of the same
// dimension, the cosine similarity of every such doc to the query is computed
// by brute force (a dot product of unit vectors). The best max(50, 4·Top)
// docs by BM25 and the best max(50, 4·Top) docs by positive cosine form two
// rankings, fused with Reciprocal Rank Fusion:
//
//	score(d) = Σ over the rankings r containing d of 1 / (60 + rank_r(d))
//
// with ranks starting at 1. RRF needs no calibration between BM25 scores and
// cosines, and favours docs found by both rankings. Each [Hit] also carries
// its raw BM25 score and cosine. A query vector of another dimension than the
// segments' is ignored and the ranking is lexical.
//
// # Ties
//
// Docs of equal scores (in either ranking, and after fusion) rank by a hash of
// their text and title, then by ascending ID: ids are minted when documents
// are stored, so the same documents stored again, or in another order, rank
// alike for the same query.
package index
