// Training: zones, target alerts, auto-pause and auto-lap (issue 9).
