"""The export stage (.keras in, validated .tflite out); installed as
``albert_keras.export``. Not built yet: see the export issue."""
