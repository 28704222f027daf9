import './base.css';
import './exchanges.css';
