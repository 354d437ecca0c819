import Sensors
