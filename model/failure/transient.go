package failure

import "strings"

// transientClasses are the provider classes a retry can outlast.
var transientClasses = map[Class]bool{ClassRateLimit: true, ClassTimeout: true, ClassServer: true, ClassNetwork: true}

// ExceptionTransient splits the factory's grab-bag "exception" stage (the
// factory audit, F2) by the exception's text: rate limits, timeouts, 5xx and network
// errors are transient, a retry can outlast them. Everything else is
// permanent: a bad API key (auth), a model that does not exist or a module
// that is not installed (client: "model not found", ModuleNotFoundError),
// ImportError, and text nothing recognises. Unknown text counts as
// permanent because the audit's point is that the grab-bag retries
// deterministic failures; a policy that wants it retried does not mark the
// class transient-only.
func ExceptionTransient(text string) bool {
	if permanentException(text) {
		return false
	}
	return transientClasses[DefaultProvider.Classify(text)]
}

func permanentException(text string) bool {
	l := strings.ToLower(text)
	for _, s := range []string{"importerror", "modulenotfounderror", "no module named", "model not found",
		"model_not_found", "does not exist", "not installed"} {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}
