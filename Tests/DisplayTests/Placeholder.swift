import Display
