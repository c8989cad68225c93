package cli

import "github.com/iotrace/iotrace/backend/etw/live"

// sendMark writes text as a marker event into every running iotrace ETW
// session.
func sendMark(text string) (int, error) {
	api, err := live.DefaultAPI()
	if err != nil {
		return 0, err
	}
	return live.SendMark(api, text)
}
