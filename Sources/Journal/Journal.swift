// Journal: the flash journal format and recovery (issue 5).
