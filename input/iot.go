package input

import (
	"github.com/iotrace/iotrace/tracefile"
)

var iotFormat = Format{
	Name:        "iot",
	Description: "iotrace trace file",
	Match:       tracefile.Match,
	Open: func(path string) (Reader, error) {
		r, err := tracefile.Open(path)
		if err != nil {
			return nil, err
		}
		return r, nil
	},
}
