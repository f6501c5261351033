package index

// stopwords is the set of English function words the analyzer drops. It is the
// widely used NLTK English list (lowercase surface forms, before stemming),
// with the contractions written with a straight apostrophe, which is what the
// tokenizer produces for both ' and ’. It is read-only after initialisation.
var stopwords = func() map[string]struct{} {
	words := []string{
		"a", "about", "above", "after", "again", "against", "ain", "all", "am", "an",
		"and", "any", "are", "aren", "aren't", "as", "at", "be", "because", "been",
		"before", "being", "below", "between", "both", "but", "by", "can", "couldn",
		"couldn't", "d", "did", "didn", "didn't", "do", "does", "doesn", "doesn't",
		"doing", "don", "don't", "down", "during", "each", "few", "for", "from",
		"further", "had", "hadn", "hadn't", "has", "hasn", "hasn't", "have", "haven",
		"haven't", "having", "he", "her", "here", "hers", "herself", "him", "himself",
		"his", "how", "i", "if", "in", "into", "is", "isn", "isn't", "it", "it's",
		"its", "itself", "just", "ll", "m", "ma", "me", "mightn", "mightn't", "more",
		"most", "mustn", "mustn't", "my", "myself", "needn", "needn't", "no", "nor",
		"not", "now", "o", "of", "off", "on", "once", "only", "or", "other", "our",
		"ours", "ourselves", "out", "over", "own", "re", "s", "same", "shan",
		"shan't", "she", "she's", "should", "should've", "shouldn", "shouldn't", "so",
		"some", "such", "t", "than", "that", "that'll", "the", "their", "theirs",
		"them", "themselves", "then", "there", "these", "they", "this", "those",
		"through", "to", "too", "under", "until", "up", "ve", "very", "was", "wasn",
		"wasn't", "we", "were", "weren", "weren't", "what", "when", "where", "which",
		"while", "who", "whom", "why", "will", "with", "won", "won't", "wouldn",
		"wouldn't", "y", "you", "you'd", "you'll", "you're", "you've", "your",
		"yours", "yourself", "yourselves",
	}
	set := make(map[string]struct{}, len(words))
	for _, w := range words {
		set[w] = struct{}{}
	}
	return set
}()

// irregular maps irregular English plurals, which the Snowball stemmer leaves
// apart from their singulars ("indices" → "indic", "index" → "index"), to the
// singular that is then stemmed. It is read-only.
var irregular = map[string]string{
	"analyses":   "analysis",
	"appendices": "appendix",
	"axes":       "axis",
	"children":   "child",
	"criteria":   "criterion",
	"hypotheses": "hypothesis",
	"indices":    "index",
	"matrices":   "matrix",
	"men":        "man",
	"mice":       "mouse",
	"people":     "person",
	"phenomena":  "phenomenon",
	"vertices":   "vertex",
	"women":      "woman",
}
