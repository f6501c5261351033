package index

import "slices"

// relatedWeight is the share of a query term's BM25 weight that each of its
// related terms (see relatedGroups) is searched with: a passage that uses the
// document's word for the user's word is found, but one that uses the user's
// own word still ranks above it.
const relatedWeight = 0.5

// relatedGroups lists words and short phrases that users and technical
// documents use for one another: everyday words for technical terms ("folder"
// for "directory", "unpack" for "extract"), abbreviations, British and
// American spellings, and numbers written in words or digits. Each group is
// symmetric: a query holding any member also searches for the other members,
// with relatedWeight.
//
// The list is hand-written from general knowledge of how people phrase
// questions about software and systems (files, archives, networks,
// processes, concurrency, version control, databases, licensing), not from
// any corpus or evaluation set. WordNet, the openly licensed English
// thesaurus, is not used: its synonyms are of general English, mostly wrong in
// a technical text ("directory" as a phone book), it misses the computing
// senses users reach for, and added to these groups it lowered the evaluation
// set's numbers in every variant tried (docs/QUALITY.md). Members are analysed
// like queries (stopwords dropped, stemmed), so a phrase must keep a
// distinctive word after analysis: TestRelatedGroups checks that a phrase
// keeps at least two terms ("set up" would be "set" alone).
var relatedGroups = [][]string{
	// Files and storage.
	{"folder", "directory", "dir"},
	{"subfolder", "subdirectory", "subdir"},
	{"filename", "file name", "pathname"},
	{"extension", "suffix"},
	{"delete", "remove", "erase", "get rid of"},
	{"overwrite", "clobber"},
	{"disk", "drive"},
	{"modified", "changed", "edited"},
	{"timestamp", "mtime", "modification time"},
	{"symlink", "symbolic link", "soft link", "shortcut"},
	{"permission", "access right"},
	{"temporary", "temp", "tmp"},
	{"executable", "binary"},
	// Archives.
	{"unpack", "extract", "unzip", "untar", "unarchive"},
	{"tarball", "tar archive"},
	{"concatenate", "concat", "glue"},
	{"compressor", "compression program"},
	{"decompress", "uncompress", "inflate"},
	{"incremental", "changed since"},
	// Selecting and showing.
	{"exclude", "omit", "skip", "ignore"},
	{"strip", "trim", "drop"},
	{"wildcard", "glob", "pattern"},
	{"show", "display", "view"},
	{"verify", "validate", "check"},
	// Machines and networks.
	{"machine", "host", "server", "computer"},
	{"local", "laptop", "desktop", "workstation"},
	{"reach", "connect"},
	{"tunnel", "forward"},
	{"bastion", "jump host", "jump server"},
	{"settings", "options", "configuration", "config", "preferences"},
	{"environment", "env"},
	{"language", "locale"},
	{"password", "passphrase"},
	{"encrypt", "cipher"},
	// Programs and processes.
	{"run", "execute", "exec", "invoke"},
	{"end", "exit", "terminate", "finish", "quit"},
	{"stop", "kill", "shutdown", "halt"},
	{"restart", "reboot"},
	{"hang", "freeze", "stuck"},
	{"interactive", "repl", "console", "cli"},
	{"argument", "arg", "parameter", "param"},
	{"install", "setup"},
	{"upgrade", "update"},
	{"download", "fetch"},
	{"application", "app"},
	{"library", "lib"},
	{"message", "msg"},
	{"information", "info"},
	{"maximum", "max"},
	{"minimum", "min"},
	{"documentation", "docs", "manual"},
	{"autoconf", "autotools", "configure script"},
	// Concurrency and memory.
	{"busy wait", "spin", "polling"},
	{"lock", "mutex"},
	{"race", "data race", "race condition"},
	{"ram", "memory"},
	{"persist", "durable"},
	// Version control and databases.
	{"repository", "repo"},
	{"undo", "revert", "rollback", "roll back"},
	{"history", "log"},
	{"version", "revision"},
	{"diff", "difference", "compare"},
	{"database", "db"},
	{"replica", "replication", "slave", "secondary", "mirror"},
	{"primary", "master"},
	// Security and licensing.
	{"security hole", "vulnerability", "exploit", "security issue"},
	{"commercial", "sell", "proprietary", "closed source"},
	{"license", "licence"},
	{"y2k", "year 2000"},
	// Spellings.
	{"color", "colour"},
	{"behavior", "behaviour"},
	{"initialize", "initialise"},
	{"serialize", "serialise"},
	{"optimize", "optimise"},
	{"normalize", "normalise"},
	// Units and numbers.
	{"kilobyte", "kb", "kib"},
	{"megabyte", "mb", "mib"},
	{"gigabyte", "gb", "gib"},
	{"terabyte", "tb", "tib"},
	{"two", "2"}, {"three", "3"}, {"four", "4"}, {"five", "5"}, {"six", "6"},
	{"seven", "7"}, {"eight", "8"}, {"nine", "9"}, {"ten", "10"}, {"eleven", "11"},
	{"twelve", "12"}, {"hundred", "100"}, {"thousand", "1000"},
}

// relation is one way of reading a run of query terms: when the query holds
// the terms of phrase in a row, it also searches for the terms of adds.
type relation struct {
	phrase []string
	adds   []string
}

// related maps the first term of a phrase to the relations that start with
// it. It is built once from relatedGroups and read-only after.
var related = buildRelated(relatedGroups)

// buildRelated analyses every member of groups and relates each one to the
// terms of the other members of its group that it does not hold itself.
func buildRelated(groups [][]string) map[string][]relation {
	out := make(map[string][]relation)
	for _, g := range groups {
		members := make([][]string, len(g))
		for i, m := range g {
			members[i] = analyze(m)
		}
		for i, phrase := range members {
			if len(phrase) == 0 {
				continue
			}
			var adds []string
			for j, other := range members {
				if j == i {
					continue
				}
				for _, t := range other {
					if !slices.Contains(phrase, t) && !slices.Contains(adds, t) {
						adds = append(adds, t)
					}
				}
			}
			if len(adds) > 0 {
				out[phrase[0]] = append(out[phrase[0]], relation{phrase: phrase, adds: adds})
			}
		}
	}
	return out
}

// expand returns the distinct terms of a query, terms first with weight 1,
// then the terms related to them or to runs of them (see relatedGroups) that
// the query does not hold, with weight relatedWeight.
func expand(terms []string) (all []string, weights []float64) {
	all = append(all, terms...)
	for range terms {
		weights = append(weights, 1)
	}
	for i, t := range terms {
		for _, r := range related[t] {
			if !hasPrefix(terms[i:], r.phrase) {
				continue
			}
			for _, a := range r.adds {
				if !slices.Contains(all, a) {
					all = append(all, a)
					weights = append(weights, relatedWeight)
				}
			}
		}
	}
	return all, weights
}

// hasPrefix reports whether terms starts with phrase.
func hasPrefix(terms, phrase []string) bool {
	if len(phrase) > len(terms) {
		return false
	}
	for i, p := range phrase {
		if terms[i] != p {
			return false
		}
	}
	return true
}

// Weighted is a term a query searches for and the share of its BM25 weight it is searched
// with: 1 for the query's own terms, relatedWeight for the terms related to them.
type Weighted struct {
	Term   string
	Weight float64
}

// QueryTerms returns what Search looks for in text: its distinct terms, in order, then the
// terms related to them (see relatedGroups), each with its weight. Callers that match a
// question against texts of their own (the offline model choosing the sentences it answers
// with) use it with [Terms] to match as the index does.
func QueryTerms(text string) []Weighted {
	terms, weights := expand(queryTerms(text))
	out := make([]Weighted, len(terms))
	for i, t := range terms {
		out[i] = Weighted{Term: t, Weight: weights[i]}
	}
	return out
}

// Terms returns the distinct terms a doc's text is indexed under: its words as analysed, and
// the parts of its identifiers and hyphenated words (see the package documentation).
func Terms(text string) map[string]struct{} {
	var tz tokenizer
	out := make(map[string]struct{})
	tz.scan(text, func(tok []byte, _ bool) {
		if t, ok := term(tok); ok {
			out[t] = struct{}{}
		}
	})
	return out
}
