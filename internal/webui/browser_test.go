package webui_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chromiumContext starts a headless Chromium (the binary at chromium) with a
// window width px wide and 900 high, and returns a tab's context that ends
// after timeout; the browser is closed when the test ends.
func chromiumContext(t *testing.T, parent context.Context, chromium string, width int, timeout time.Duration) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium), chromedp.NoSandbox, chromedp.Flag("headless", true),
		chromedp.Flag("disable-gpu", true), chromedp.WindowSize(width, 900))
	actx, cancelAlloc := chromedp.NewExecAllocator(parent, opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	ctx, cancelTime := context.WithTimeout(ctx, timeout)
	t.Cleanup(func() { cancelTime(); cancelTab(); cancelAlloc() })
	return ctx
}

// steps returns a function that runs a step's actions in ctx and fails the
// test, naming the step, when one fails.
func steps(t *testing.T, ctx context.Context) func(step string, actions ...chromedp.Action) {
	return func(step string, actions ...chromedp.Action) {
		t.Helper()
		if err := chromedp.Run(ctx, actions...); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
	}
}

// saveShot is an action that writes a screenshot to path: of the whole
// page when full, else of the window's view.
func saveShot(path string, full bool) chromedp.Action {
	return chromedp.ActionFunc(func(ctx context.Context) error {
		var png []byte
		var err error
		if full {
			err = chromedp.FullScreenshot(&png, 100).Do(ctx)
		} else {
			err = chromedp.CaptureScreenshot(&png).Do(ctx)
		}
		if err != nil {
			return err
		}
		return os.WriteFile(path, png, 0o644)
	})
}
