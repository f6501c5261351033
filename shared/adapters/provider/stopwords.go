package provider

// stopwords are the words the offline model ignores when it matches a question with passages:
// English function words and the usual politeness of a chat question. Read-only.
var stopwords = func() map[string]struct{} {
	words := []string{
		"a", "about", "above", "after", "again", "against", "all", "also", "am", "an", "and",
		"any", "are", "aren't", "as", "at", "be", "because", "been", "before", "being", "below",
		"between", "both", "but", "by", "can", "can't", "cannot", "could", "couldn't", "did",
		"didn't", "do", "does", "doesn't", "doing", "don't", "down", "during", "each", "either",
		"else", "ever", "few", "for", "from", "further", "had", "hadn't", "has", "hasn't", "have",
		"haven't", "having", "he", "hello", "her", "here", "hers", "herself", "hi", "him",
		"himself", "his", "how", "i", "i'd", "i'm", "i've", "if", "in", "into", "is", "isn't",
		"it", "it's", "its", "itself", "just", "know", "let", "me", "might", "more", "most",
		"must", "my", "myself", "need", "no", "nor", "not", "now", "of", "off", "on", "once",
		"one", "only", "or", "other", "our", "ours", "ourselves", "out", "over", "own", "please",
		"s", "same", "shall", "she", "should", "shouldn't", "so", "some", "such", "t", "tell",
		"than", "thank", "thanks", "that", "that's", "the", "their", "theirs", "them",
		"themselves", "then", "there", "there's", "these", "they", "this", "those", "through",
		"to", "too", "under", "until", "up", "us", "very", "was", "wasn't", "we", "were",
		"weren't", "what", "what's", "when", "where", "which", "while", "who", "whom", "whose",
		"why", "will", "with", "won't", "would", "wouldn't", "you", "you'd", "you'll", "you're",
		"you've", "your", "yours", "yourself", "yourselves",
	}
	set := make(map[string]struct{}, len(words))
	for _, w := range words {
		set[w] = struct{}{}
	}
	return set
}()
