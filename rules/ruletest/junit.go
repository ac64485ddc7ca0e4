package ruletest

import (
	"encoding/xml"
	"fmt"
	"os"
	"strings"
	"time"
)

// JUnit XML, as CI systems read it.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitProblem `xml:"failure,omitempty"`
	Error     *junitProblem `xml:"error,omitempty"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

// WriteJUnit writes the outcome of the files as JUnit XML: a suite per
// file, a case per test, and a file that could not be loaded as a suite
// with one erring case.
func WriteJUnit(path string, files []FileResult) error {
	var out junitSuites
	for _, f := range files {
		s := junitSuite{Name: f.Path}
		var total time.Duration
		if f.Err != nil {
			s.Tests, s.Errors = 1, 1
			s.Cases = append(s.Cases, junitCase{Name: "load " + f.Path, Classname: f.Path, Time: "0.000",
				Error: &junitProblem{Message: f.Err.Error(), Text: f.Err.Error()}})
		}
		for _, r := range f.Results {
			total += r.Duration
			c := junitCase{Name: r.Name, Classname: f.Path, Time: fmt.Sprintf("%.3f", r.Duration.Seconds())}
			if r.Failure != "" {
				msg := strings.SplitN(r.Failure, "\n", 2)[0]
				c.Failure = &junitProblem{Message: msg, Text: r.Failure}
				s.Failures++
			}
			s.Tests++
			s.Cases = append(s.Cases, c)
		}
		s.Time = fmt.Sprintf("%.3f", total.Seconds())
		out.Tests += s.Tests
		out.Failures += s.Failures
		out.Errors += s.Errors
		out.Suites = append(out.Suites, s)
	}
	b, err := xml.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append([]byte(xml.Header), append(b, '\n')...), 0o644)
}
